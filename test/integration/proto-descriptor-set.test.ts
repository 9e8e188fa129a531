/**
 * The descriptor set gRPC reflection serves (schemas/proto/tickwork.descriptor-set.binpb) is
 * byte for byte what protoc writes from the committed .proto files today, so the two cannot drift:
 * change a .proto, run `npm run proto:descriptors`, commit both. Needs protoc and the well-known
 * types (Debian's protobuf-compiler and libprotobuf-dev; test/run installs them when it can).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PROTO_DIR = join(__dirname, '..', '..', 'schemas', 'proto');

describe('the committed descriptor set', () => {
  it('is what protoc writes from the committed .proto files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tickwork-descriptors-'));
    try {
      const fresh = join(dir, 'set.binpb');
      const r = spawnSync('bash', [join(PROTO_DIR, 'descriptor-set.sh'), fresh], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`descriptor-set.sh exited ${r.status}:\n${r.stdout}${r.stderr}`);
      const committed = readFileSync(join(PROTO_DIR, 'tickwork.descriptor-set.binpb'));
      const written = readFileSync(fresh);
      if (!committed.equals(written)) {
        throw new Error(
          'schemas/proto/tickwork.descriptor-set.binpb is stale (or protoc differs): run npm run proto:descriptors',
        );
      }
      expect(written.length).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
