/**
 * Scenario 3 (issue 24, defect 3): executor membership changes, in three variants, each on a fresh
 * deployment of two schedulers and two executors.
 *
 * - executor-kill9: kill -9 of one executor. Bounds: fires on the partitions the survivor holds are
 *   delayed by at most 10 s, and their p99 is back under 1 s from 10 s after the kill; the dead
 *   member's partitions recover within the session timeout + 5 s.
 * - executor-restart-loop: kill -9 of the same executor every 25 s, restarted at once each time
 *   (a crash loop). The same bounds, for every kill.
 * - executor-rolling: a rolling restart, SIGTERM then start, one executor after the other. Bound: no
 *   fire later than 2 s.
 *
 * Which executor held which fires partition is read from the ledger: the lease owner of the runs
 * that finished in the 6 s before the fault.
 */
import { quantile, recoveryMs, type RECOVERY, type Verdict } from '../harness/oracle';
import { runScenario, scheduledIn, seconds, type Run, type Scenario } from '../harness/scenario';
import { sleep, until } from '../harness/wait';

const SURVIVOR_DELAY_BOUND_MS = 10_000;
const GRACEFUL_BOUND_MS = 2_000;

/** The executor each fires partition's runs belonged to, from runs finished in [at − 6 s, at − 0.3 s). */
function partitionOwners(verdicts: readonly Verdict[], at: number): Map<number, string> {
  const votes = new Map<number, Map<string, number>>();
  for (const v of verdicts) {
    if (!v.runOwner || v.runFinishedAt === undefined) continue;
    if (v.runFinishedAt < at - 6_000 || v.runFinishedAt >= at - 300) continue;
    const m = votes.get(v.partition) ?? new Map<string, number>();
    m.set(v.runOwner, (m.get(v.runOwner) ?? 0) + 1);
    votes.set(v.partition, m);
  }
  const owners = new Map<number, string>();
  for (const [p, m] of votes) owners.set(p, [...m.entries()].sort((a, b) => b[1] - a[1])[0]![0]);
  return owners;
}

const maxLateness = (vs: readonly Verdict[]) =>
  vs.reduce((m, v) => Math.max(m, v.firstArrival === undefined ? Infinity : v.firstArrival - v.scheduled), 0);
const fmtLate = (ms: number) => (Number.isFinite(ms) ? seconds(ms) : 'never (missing)');

/**
 * The bounds of one kill at `kill`, judged up to `end`: the survivor's partitions' delay, their p99
 * from 10 s after the kill, and the recovery of the victim's partitions.
 */
function judgeKill(
  run: Run,
  verdicts: readonly Verdict[],
  label: string,
  kill: number,
  end: number,
  victimId: string,
  survivorId: string,
  recovery: typeof RECOVERY,
): { survivorMaxMs: number; victimRecoveryMs: number | undefined } {
  const sessionMs = run.d.config.executor.sessionTimeoutMs;
  const owners = partitionOwners(verdicts, kill);
  const all = Array.from({ length: run.d.config.firesPartitions }, (_, p) => p);
  const survivorParts = all.filter((p) => owners.get(p) === survivorId);
  // The victim's partitions, and any nobody ran anything on in the 6 s before the kill (a group
  // still stalled by an earlier kill): a stall must not escape both bounds.
  const victimParts = all.filter((p) => owners.get(p) !== survivorId);
  const idle = all.filter((p) => !owners.has(p));
  run.note(
    `${label}: in the 6 s before the kill ${victimId} ran partitions [${all.filter((p) => owners.get(p) === victimId).join(', ')}], ${survivorId} ran [${survivorParts.join(', ')}]${idle.length ? `, nobody ran [${idle.join(', ')}] (counted with the victim's)` : ''}`,
  );
  const on = (parts: number[]) => verdicts.filter((v) => parts.includes(v.partition));
  const survivorOccs = scheduledIn(on(survivorParts), kill, end);
  const survivorMaxMs = maxLateness(survivorOccs);
  run.check(
    `${label}: survivor's partitions delayed ≤ 10 s`,
    `max lateness ≤ ${SURVIVOR_DELAY_BOUND_MS / 1000} s for fires due after the kill on partitions the survivor held`,
    survivorParts.length === 0 ? 'the survivor ran no partition before the kill' : fmtLate(survivorMaxMs),
    survivorParts.length === 0 || survivorMaxMs <= SURVIVOR_DELAY_BOUND_MS,
  );
  const after = scheduledIn(on(survivorParts), kill + 10_000, end)
    .filter((v) => v.firstArrival !== undefined)
    .map((v) => v.firstArrival! - v.scheduled);
  if (after.length > 0) {
    const p99 = quantile(after, 0.99);
    run.check(
      `${label}: survivor's p99 back under 1 s`,
      'p99 lateness < 1 s for fires due from 10 s after the kill on the survivor’s partitions',
      seconds(p99),
      p99 < 1_000,
    );
  }
  const victimRecoveryMs =
    victimParts.length === 0 ? undefined : recoveryMs(on(victimParts), kill, kill - 2_000, end, recovery);
  run.check(
    `${label}: the dead member's partitions recover`,
    `≤ session timeout (${seconds(sessionMs)}) + 5 s after the kill`,
    victimParts.length === 0
      ? 'the victim ran no partition before the kill (nothing to recover)'
      : victimRecoveryMs === undefined
        ? `not within ${seconds(end - kill)}`
        : seconds(victimRecoveryMs),
    victimParts.length === 0 || (victimRecoveryMs !== undefined && victimRecoveryMs <= sessionMs + 5_000),
  );
  return { survivorMaxMs, victimRecoveryMs };
}

export const executorKill9: Scenario = {
  name: 'executor-kill9',
  title: 'kill -9 of one of two executors (the full run restarts it after the session timeout + 20 s)',
  bound:
    "fires on the survivor's partitions delayed ≤ 10 s, their p99 < 1 s from 10 s after the kill; the dead member's partitions recover ≤ session timeout + 5 s",
  run: (ctx) =>
    runScenario(
      ctx,
      {
        name: 'executor-kill9',
        title: executorKill9.title,
        deployment: { schedulers: 2, executors: 2 },
        plannedMs: 150_000,
      },
      async (run) => {
        const { d } = run;
        const sessionMs = d.config.executor.sessionTimeoutMs;
        await sleep(run.baselineMs);
        const victim = d.executors[0]!;
        const survivor = d.executors[1]!;
        const kill = run.fault(`kill -9 ${victim.id} (session timeout ${seconds(sessionMs)})`);
        await victim.kill();
        await until(kill + sessionMs + (ctx.short ? 10_000 : 20_000));
        // The full run also restarts the victim and watches the group take it back (reported).
        const restartAt = Date.now();
        if (!ctx.short) {
          run.mark(`restarting ${victim.id}`);
          await d.restart(victim);
          run.mark(`${victim.id} ready again`);
          await sleep(15_000);
        }
        run.endWindow();
        return ({ verdicts, to, recovery }) => {
          const r = judgeKill(run, verdicts, 'kill', kill, restartAt, victim.id, survivor.id, recovery);
          run.recoveryMs = r.victimRecoveryMs ?? null;
          run.recoveryBoundMs = sessionMs + 5_000;
          if (!ctx.short) {
            const rejoin = scheduledIn(verdicts, restartAt, to);
            run.note(`after ${victim.id} rejoined: max lateness ${fmtLate(maxLateness(rejoin))} (reported)`);
          }
          run.details.survivorMaxLatenessMs = r.survivorMaxMs;
        };
      },
    ),
};

export const executorRestartLoop: Scenario = {
  name: 'executor-restart-loop',
  title: 'kill -9 of one executor every 25 s, restarted at once (a crash loop)',
  bound:
    "for every kill: the survivor's partitions delayed ≤ 10 s, their p99 < 1 s from 10 s after it; the dead member's partitions recover ≤ session timeout + 5 s",
  run: (ctx) => {
    const kills = ctx.short ? 2 : 4;
    return runScenario(
      ctx,
      {
        name: 'executor-restart-loop',
        title: executorRestartLoop.title,
        deployment: { schedulers: 2, executors: 2 },
        plannedMs: kills * 25_000 + 90_000,
      },
      async (run) => {
        const { d } = run;
        const sessionMs = d.config.executor.sessionTimeoutMs;
        await sleep(run.baselineMs);
        let victim = d.executors[0]!;
        const victimId = victim.id;
        const survivor = d.executors[1]!;
        const at: number[] = [];
        for (let i = 1; i <= kills; i++) {
          const kill = run.fault(`kill ${i}: kill -9 ${victim.id}, restarted at once`);
          at.push(kill);
          await victim.kill();
          victim = await d.restart(victim, false);
          if (i < kills) await until(kill + 25_000);
        }
        await victim
          .ready()
          .catch((e: Error) =>
            run.note(`the restarted executor never became ready: ${e.message.split('\n')[0]}`),
          );
        await until(at[at.length - 1]! + sessionMs + 15_000);
        run.endWindow();
        return ({ verdicts, to, recovery }) => {
          const recoveries = at.map(
            (kill, i) =>
              judgeKill(
                run,
                verdicts,
                `kill ${i + 1}`,
                kill,
                at[i + 1] ?? to,
                victimId,
                survivor.id,
                recovery,
              ).victimRecoveryMs,
          );
          run.details.recoveriesMs = recoveries.map((r) => r ?? null);
          run.recoveryMs = recoveries.some((r) => r === undefined)
            ? null
            : Math.max(...recoveries.map((r) => r!));
          run.recoveryBoundMs = sessionMs + 5_000;
        };
      },
    );
  },
};

export const executorRolling: Scenario = {
  name: 'executor-rolling',
  title: 'rolling restart of both executors (SIGTERM, start again, one after the other)',
  bound: `no fire later than ${GRACEFUL_BOUND_MS / 1000} s from the first SIGTERM to the end`,
  run: (ctx) =>
    runScenario(
      ctx,
      {
        name: 'executor-rolling',
        title: executorRolling.title,
        deployment: { schedulers: 2, executors: 2 },
        plannedMs: 120_000,
      },
      async (run) => {
        const { d } = run;
        await sleep(run.baselineMs);
        const first = Date.now();
        for (let i = 0; i < d.executors.length; i++) {
          const app = d.executors[i]!;
          run.fault(`SIGTERM ${app.id}`);
          await app.stop();
          run.mark(`${app.id} exited (code ${app.exit?.code ?? app.exit?.signal}); starting it again`);
          await d.restart(app);
          run.mark(`${app.id} ready again`);
          await sleep(5_000);
        }
        await sleep(ctx.short ? 10_000 : 15_000);
        run.endWindow();
        return ({ verdicts, to }) => {
          const during = scheduledIn(verdicts, first, to);
          const worst = maxLateness(during);
          run.check(
            'graceful restarts move partitions on time',
            `max lateness ≤ ${GRACEFUL_BOUND_MS / 1000} s for fires due from the first SIGTERM on`,
            fmtLate(worst),
            worst <= GRACEFUL_BOUND_MS,
          );
          const cut = d.receiver.calls.filter((c) => c.outcome === 'cut').length;
          run.note(`${cut} calls were cut by a stopping executor (their fires were called again)`);
          run.details.maxLatenessMs = worst;
        };
      },
    ),
};
