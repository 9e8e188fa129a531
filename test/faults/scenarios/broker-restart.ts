/**
 * Scenario 5 (issue 24, defect 5): the Kafka broker restarted, down about 30 s: a controlled
 * shutdown (SIGTERM), a pause, and a start on the same data directory (the JVM's start-up is part
 * of the outage). Bounds: fires resume within 5 s of the broker's return, under their misfire
 * policy (an occurrence not fired is recorded as skipped), nothing lost or early; each executor
 * sends its share of the backlog in order of due time (no fire due more than 1 s later arriving
 * before one due earlier), and each job's fires arrive in the order of their times.
 *
 * The order is judged per executor: an executor orders what it was handed, and when executors
 * rejoin the group a second apart (each client's reconnect backoff, a coordinator still loading
 * the group) no executor can know what another holds. The order across executors is reported.
 */
import { writeFileSync } from 'node:fs';
import { recoveryMs, type Verdict } from '../harness/oracle';
import { runScenario, seconds, type Scenario } from '../harness/scenario';
import { sleep } from '../harness/wait';

const RECOVERY_BOUND_MS = 5_000;
/** Two fires due this far apart must arrive in due order... */
const ORDER_SLACK_MS = 1_000;
/** ...give or take this much of arrival jitter. */
const ARRIVAL_SLACK_MS = 200;

/**
 * When each delivered occurrence's job came due: its own time, or for a FIRE_ONCE fire that
 * stands for occurrences skipped (COALESCED) just before it, the first of those.
 */
function dueTimes(verdicts: readonly Verdict[]): Map<Verdict, number> {
  const byJob = new Map<string, Verdict[]>();
  for (const v of verdicts) byJob.set(v.occ.jobId, [...(byJob.get(v.occ.jobId) ?? []), v]);
  const due = new Map<Verdict, number>();
  for (const list of byJob.values()) {
    let runStart: number | undefined;
    for (const v of list.sort((a, b) => a.occ.nominal - b.occ.nominal)) {
      if (!v.delivered && v.skippedReason) runStart ??= v.occ.nominal;
      else {
        due.set(v, runStart ?? v.scheduled);
        runStart = undefined;
      }
    }
  }
  return due;
}

/** Backlog fires that arrived after a fire whose job came due more than ORDER_SLACK_MS later had arrived. */
function inversions(backlog: readonly Verdict[], due: Map<Verdict, number>): number {
  const byDue = backlog
    .filter((v) => v.firstArrival !== undefined)
    .map((v) => ({ s: due.get(v) ?? v.scheduled, a: v.firstArrival! }))
    .sort((x, y) => x.s - y.s);
  let count = 0;
  // For each fire, the earliest arrival among fires due more than ORDER_SLACK_MS after it.
  let j = byDue.length;
  let minLater = Infinity;
  for (let i = byDue.length - 1; i >= 0; i--) {
    while (j > 0 && byDue[j - 1]!.s > byDue[i]!.s + ORDER_SLACK_MS)
      minLater = Math.min(minLater, byDue[--j]!.a);
    if (byDue[i]!.a > minLater + ARRIVAL_SLACK_MS) count += 1;
  }
  return count;
}

/** Fires that arrived more than ARRIVAL_SLACK_MS before a delivered fire of the same job with an earlier time. */
function outOfJobOrder(verdicts: readonly Verdict[]): number {
  const byJob = new Map<string, Verdict[]>();
  for (const v of verdicts)
    if (v.firstArrival !== undefined) byJob.set(v.occ.jobId, [...(byJob.get(v.occ.jobId) ?? []), v]);
  let count = 0;
  for (const list of byJob.values()) {
    let latest = -Infinity;
    for (const v of list.sort((a, b) => a.occ.nominal - b.occ.nominal)) {
      if (v.firstArrival! < latest - ARRIVAL_SLACK_MS) count += 1;
      latest = Math.max(latest, v.firstArrival!);
    }
  }
  return count;
}

export const brokerRestart: Scenario = {
  name: 'broker-restart',
  title: 'Kafka broker restart (controlled shutdown, ~30 s down including the start-up)',
  bound: `fires resume ≤ ${RECOVERY_BOUND_MS / 1000} s after the broker answers again, in due order, under their misfire policy; nothing lost or early`,
  run: (ctx) => {
    // The broker's controlled shutdown (2-8 s) and its JVM start (15-30 s here) are part of the outage.
    const pauseMs = ctx.short ? 2_000 : 8_000;
    const observeMs = ctx.short ? 20_000 : 40_000;
    return runScenario(
      ctx,
      {
        name: 'broker-restart',
        title: brokerRestart.title,
        deployment: { schedulers: 2, executors: 2 },
        plannedMs: 10_000 + pauseMs + 30_000 + observeMs,
      },
      async (run) => {
        const kafka = run.d.stack.kafka;
        await sleep(run.baselineMs);
        const down = run.fault('broker: SIGTERM (controlled shutdown)');
        await kafka.stop('SIGTERM');
        run.mark('broker exited');
        await sleep(pauseMs);
        run.mark('broker: starting again on the same data directory');
        await kafka.start();
        const back = run.mark(`broker answers again (down ${seconds(Date.now() - down)})`);
        await sleep(observeMs);
        run.endWindow();
        return ({ verdicts, figures, to, recovery }) => {
          const r = recoveryMs(verdicts, back, down - 1_000, to, recovery);
          run.recoveryMs = r ?? null;
          run.recoveryBoundMs = RECOVERY_BOUND_MS;
          run.check(
            'fires resume after the broker is back',
            `recovery ≤ ${RECOVERY_BOUND_MS / 1000} s`,
            r === undefined ? `not within ${seconds(to - back)}` : seconds(r),
            r !== undefined && r <= RECOVERY_BOUND_MS,
          );
          // The backlog: fires of occurrences that came due during the outage (by their job's due time).
          const due = dueTimes(verdicts);
          const backlog = verdicts.filter((v) => {
            const t = due.get(v);
            return t !== undefined && t >= down && t < back;
          });
          const byExecutor = new Map<string, Verdict[]>();
          for (const v of backlog) {
            const owner = v.runOwner ?? 'unknown';
            byExecutor.set(owner, [...(byExecutor.get(owner) ?? []), v]);
          }
          const perExecutor = [...byExecutor].map(([owner, vs]) => ({
            owner,
            n: vs.length,
            inv: inversions(vs, due),
          }));
          const inv = perExecutor.reduce((sum, e) => sum + e.inv, 0);
          run.check(
            'each executor sends its backlog in due order',
            `0 fires arriving after one of the same executor due > ${ORDER_SLACK_MS / 1000} s later (± ${ARRIVAL_SLACK_MS} ms; a coalesced fire is due at its first occurrence)`,
            `${inv} of ${backlog.length} fires due during the outage (${perExecutor.map((e) => `${e.owner}: ${e.inv} of ${e.n}`).join(', ')})`,
            inv === 0,
          );
          const jobDisorder = outOfJobOrder(verdicts);
          run.check(
            "each job's fires arrive in the order of their times",
            `0 fires arriving more than ${ARRIVAL_SLACK_MS} ms before an earlier fire of the same job`,
            `${jobDisorder} in the window`,
            jobDisorder === 0,
          );
          const across = inversions(backlog, due);
          run.note(
            `across executors (reported, no bound): ${across} of ${backlog.length} backlog fires arrived after one due > ${ORDER_SLACK_MS / 1000} s later on another executor`,
          );
          run.details.inversionsAcrossExecutors = across;
          const firstAfter = backlog
            .filter((v) => v.firstArrival !== undefined && v.firstArrival >= back)
            .reduce((m, v) => Math.min(m, v.firstArrival!), Infinity);
          run.note(
            `${backlog.length} fires came due during the outage; ${figures.skippedByPolicy} occurrences of the window were skipped by their misfire policy (FIRE_ONCE: COALESCED into a later fire); first backlog delivery ${Number.isFinite(firstAfter) ? `${seconds(firstAfter - back)} after the broker was back` : 'never'}`,
          );
          run.details.downMs = back - down;
          run.details.backlog = backlog.length;
          run.details.inversions = inv;
          // Every backlog fire (due, arrival, partition, executor), for a look at what is out of order.
          if (process.env.TICKWORK_FAULTS_DUMP)
            writeFileSync(
              process.env.TICKWORK_FAULTS_DUMP,
              JSON.stringify({
                down,
                back,
                backlog: backlog.map((v) => ({
                  job: v.occ.jobId,
                  nominal: v.occ.nominal,
                  due: due.get(v),
                  arrival: v.firstArrival,
                  partition: v.partition,
                  claimedBy: v.claimedBy,
                  runOwner: v.runOwner,
                })),
              }),
            );
        };
      },
    );
  },
};
