import { ConfigError, loadConfig } from './index';
import { compactRanges, databaseIdentity, parseStoreShardMap } from './store-shards';

const A = 'postgres://postgres@127.0.0.1:5432/tickwork';
const B = 'postgres://postgres@127.0.0.1:5433/tickwork';

function parse(raw: string, shards = 12): { map: ReturnType<typeof parseStoreShardMap>; problems: string[] } {
  const problems: string[] = [];
  const map = parseStoreShardMap(raw, shards, (m) => problems.push(m));
  return { map, problems };
}

describe('the store shard map (TICKWORK_STORE_SHARDS)', () => {
  it('defaults to every shard in DATABASE_URL', () => {
    const c = loadConfig({ DATABASE_URL: A, TICKWORK_SHARDS: '4' });
    expect(c.storeShards.databases).toEqual([
      { url: A, identity: '127.0.0.1:5432/tickwork', shards: [0, 1, 2, 3] },
    ]);
    expect(c.storeShards.databaseOfShard).toEqual([0, 0, 0, 0]);
  });

  it('assigns ranges and single shards, in any order, a database taking several ranges', () => {
    const { map, problems } = parse(`6-9=${B}, 0-5=${A},10=${B},11=${B}`);
    expect(problems).toEqual([]);
    expect(map!.databases.map((d) => [d.identity, d.shards])).toEqual([
      ['127.0.0.1:5432/tickwork', [0, 1, 2, 3, 4, 5]],
      ['127.0.0.1:5433/tickwork', [6, 7, 8, 9, 10, 11]],
    ]);
    expect(map!.databaseOfShard).toEqual([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]);
  });

  it('refuses a shard mapped twice, a shard in no database and a range past TICKWORK_SHARDS', () => {
    expect(parse(`0-6=${A},6-11=${B}`).problems).toEqual(['TICKWORK_STORE_SHARDS: shard 6 is mapped twice']);
    expect(parse(`0-4=${A},6-10=${B}`).problems).toEqual([
      'TICKWORK_STORE_SHARDS: shards 5, 11 are in no database (every shard 0-11 needs one)',
    ]);
    expect(parse(`0-5=${A},6-12=${B}`).problems[0]).toMatch(
      /range 6-12 .*within 0-11 \(TICKWORK_SHARDS=12\)/,
    );
    expect(parse(`5-0=${A}`).problems[0]).toMatch(/range 5-0 must run from a lower to a higher shard/);
  });

  it('refuses entries that are not range=url, URLs that are not PostgreSQL, and hides passwords', () => {
    expect(parse(`0-11`).problems[0]).toMatch(/"0-11" must be <shard>=<url>/);
    expect(parse(`0-11=mysql://h/db`).problems[0]).toMatch(/must be a postgres:\/\/ URL/);
    expect(parse(`0-11=postgres://h:5432/`).problems[0]).toMatch(/naming a host and a database/);
    const secret = parse(`0-11=postgres://u:hunter2@h:99999999/db`).problems.join(' ');
    expect(secret).not.toContain('hunter2');
    expect(parse('').map).toBeNull();
  });

  it('refuses one database reached by two URLs (they would be two pools routing one database)', () => {
    expect(parse(`0-5=${A},6-11=postgres://other@127.0.0.1/tickwork`).problems).toEqual([
      'TICKWORK_STORE_SHARDS: 127.0.0.1:5432/tickwork is reached by two different URLs: use one',
    ]);
  });

  it('is validated at start-up with the variable named among the other problems', () => {
    expect(() => loadConfig({ TICKWORK_SHARDS: '4', TICKWORK_STORE_SHARDS: `0-2=${A}` })).toThrow(
      ConfigError,
    );
    expect(() => loadConfig({ TICKWORK_SHARDS: '4', TICKWORK_STORE_SHARDS: `0-2=${A}` })).toThrow(
      /TICKWORK_STORE_SHARDS: shards 3 are in no database/,
    );
  });

  it('names a database by host, port and name, not by credentials', () => {
    expect(databaseIdentity('postgres://u:p@DB.example:5432/t?sslmode=require')).toBe('db.example:5432/t');
    expect(databaseIdentity('postgresql://db.example/t')).toBe('db.example:5432/t');
    expect(compactRanges([0, 1, 2, 5, 7, 8])).toBe('0-2, 5, 7-8');
  });
});
