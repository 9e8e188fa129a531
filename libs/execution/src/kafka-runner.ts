/** Publishes the job payload to a Kafka topic (the "fire into Kafka" target). */
import type { KafkaTarget } from '@tickwork/domain';
import type { MessageProducer } from '@tickwork/messaging';
import type { AttemptOutcome, TargetRequest, TargetRunner } from './attempt';

export class KafkaRunner implements TargetRunner<KafkaTarget> {
  constructor(private readonly producer: MessageProducer) {}

  async run(target: KafkaTarget, req: TargetRequest): Promise<AttemptOutcome> {
    try {
      await this.producer.send([
        {
          topic: target.topic,
          messages: [
            {
              key: target.key ?? req.jobId,
              value: req.body === null ? null : Buffer.from(req.body),
              headers: {
                ...target.headers,
                'tickwork-job-id': req.jobId,
                'tickwork-fence-token': String(req.fenceToken),
                'tickwork-fire-id': req.fireId,
                'tickwork-scheduled-for': req.scheduledFor.toISOString(),
              },
            },
          ],
        },
      ]);
      return { ok: true, httpStatus: null, error: null, retryable: false };
    } catch (e) {
      return { ok: false, httpStatus: null, error: `${(e as Error).name}: ${(e as Error).message}`, retryable: true };
    }
  }
}
