/**
 * Every span attribute and metric label Tickwork writes, in one enum: the OpenTelemetry semantic
 * conventions for messaging, database, HTTP and RPC, Tickwork's own `tickwork.*` attributes, and
 * the short Prometheus-style label names of its metrics. A name used anywhere else is a bug.
 */
export enum Attr {
  // Tickwork: the identity of an occurrence, on every span about a fire.
  JobId = 'tickwork.job_id',
  TenantId = 'tickwork.tenant_id',
  FenceToken = 'tickwork.fence_token',
  /** ISO-8601 UTC: when the occurrence was due (nominal time plus jitter). */
  ScheduledFor = 'tickwork.scheduled_for',
  FireId = 'tickwork.fire_id',
  Attempt = 'tickwork.attempt',
  /** SCHEDULE, MANUAL or REPLAY. */
  Trigger = 'tickwork.trigger',
  Shard = 'tickwork.shard',
  /** The fire was re-published from the outbox by the relay. */
  Relayed = 'tickwork.relayed',
  ClaimFires = 'tickwork.claim.fires',
  ClaimSkipped = 'tickwork.claim.skipped',
  ClaimShards = 'tickwork.claim.shards',
  /** What a link points at: `claim`, `job-request`, `previous-attempt`. */
  LinkRole = 'tickwork.link.role',
  Outcome = 'tickwork.outcome',
  /** The audited action of a job mutation (CreateJob, UpdateJob, …). */
  Action = 'tickwork.action',

  // Messaging (semantic conventions 1.27+).
  MessagingSystem = 'messaging.system',
  MessagingDestination = 'messaging.destination.name',
  MessagingPartition = 'messaging.destination.partition.id',
  MessagingOperationType = 'messaging.operation.type',
  MessagingOperationName = 'messaging.operation.name',
  MessagingBatchCount = 'messaging.batch.message_count',
  MessagingConsumerGroup = 'messaging.consumer.group.name',
  MessagingMessageId = 'messaging.message.id',
  MessagingKafkaKey = 'messaging.kafka.message.key',
  MessagingKafkaOffset = 'messaging.kafka.offset',

  // Database.
  DbSystem = 'db.system.name',
  DbOperation = 'db.operation.name',
  DbCollection = 'db.collection.name',
  DbBatchSize = 'db.operation.batch.size',

  // HTTP and URL.
  HttpMethod = 'http.request.method',
  HttpStatus = 'http.response.status_code',
  HttpRoute = 'http.route',
  UrlFull = 'url.full',
  UrlPath = 'url.path',
  UrlScheme = 'url.scheme',
  ServerAddress = 'server.address',
  ServerPort = 'server.port',

  // RPC.
  RpcSystem = 'rpc.system',
  RpcService = 'rpc.service',
  RpcMethod = 'rpc.method',
  RpcGrpcStatus = 'rpc.grpc.status_code',

  ErrorType = 'error.type',

  // Metric labels: short, Prometheus style.
  Tenant = 'tenant',
  ShardLabel = 'shard',
  Reason = 'reason',
  OutcomeLabel = 'outcome',
  Group = 'group',
  Topic = 'topic',
  Partition = 'partition',
  RelayedLabel = 'relayed',
  TargetType = 'target_type',
  Result = 'result',
  Component = 'component',
  /** Only on the series of jobs that opted in to per-job metrics (bounded by configuration). */
  JobLabel = 'job_id',
}
