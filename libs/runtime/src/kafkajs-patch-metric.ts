/**
 * The kafkajs patches as a metric: which took effect in this process, so a silent fall-back to
 * stock kafkajs speed (a patch that did not take effect) shows on a dashboard, not only in a log.
 */
import type { Meter } from '@opentelemetry/api';
import { KAFKAJS_PATCHES, kafkajsPatchReport } from '@tickwork/messaging';
import { defineMetric, gaugeOf, meter } from '@tickwork/telemetry';

/** `tickwork_kafkajs_patch_info{patch, applied, kafkajs_version}`: 1 per patch, once installed. */
export const KAFKAJS_PATCH_INFO = defineMetric({
  name: 'tickwork.kafkajs.patch_info',
  kind: 'gauge',
  help: 'Each kafkajs patch, with applied="true" when it took effect in this process (always 1).',
});

const observing = new WeakSet<Meter>();

/** Exports KAFKAJS_PATCH_INFO on Tickwork's meter (once per meter); call it after startTelemetry. */
export function observeKafkajsPatches(): void {
  const m = meter();
  if (observing.has(m)) return;
  observing.add(m);
  gaugeOf(m, KAFKAJS_PATCH_INFO).addCallback((r) => {
    const report = kafkajsPatchReport();
    if (!report) return;
    for (const patch of KAFKAJS_PATCHES)
      r.observe(1, {
        patch,
        applied: String(report.applied[patch]),
        kafkajs_version: report.kafkajsVersion,
      });
  });
}
