/** Where a fire is delivered. */

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** Call an HTTP endpoint with the job payload as the JSON body. */
export interface WebhookTarget {
  readonly type: 'webhook';
  readonly url: string;
  readonly method: HttpMethod;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  /** Inclusive range of statuses that count as success. */
  readonly successStatus: { readonly min: number; readonly max: number };
}

/** Publish the job payload to a Kafka topic. */
export interface KafkaTarget {
  readonly type: 'kafka';
  readonly topic: string;
  readonly key: string | null;
  readonly headers: Readonly<Record<string, string>>;
}

export type Target = WebhookTarget | KafkaTarget;
export type TargetType = Target['type'];
export const TARGET_TYPES: readonly TargetType[] = ['webhook', 'kafka'];
