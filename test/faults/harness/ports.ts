/**
 * Ports for the suite's servers, taken below the kernel's ephemeral range (32768–60999 here):
 * a port picked there by "bind to 0, close" can be handed to any other process's connection or
 * test a moment later, and an app of another test answering /health/ready on it would pass for
 * ours. Ports are also never handed out twice in one run (a restart reuses its app's own).
 */
import { createServer } from 'node:net';

const LOW = 20_000;
const HIGH = 32_000;
const taken = new Set<number>();

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A port in [20000, 32000) that is free now and was not given out before in this run. */
export async function allocatePort(): Promise<number> {
  for (let i = 0; i < 500; i++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (taken.has(port)) continue;
    taken.add(port);
    if (await canBind(port)) return port;
  }
  throw new Error(`no free port found in [${LOW}, ${HIGH})`);
}
