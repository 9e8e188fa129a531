// Readiness probe used by infra/stack: a real Metadata request (kafkajs admin describeCluster).
// Exit 0 when the broker answers with at least one broker and a controller; 1 otherwise; 2 when
// kafkajs cannot be loaded (infra/stack then falls back to Kafka's own BrokerApiVersionsCommand).
// With `--brokers N` the answer must also list at least N brokers (a cluster node that has joined).
'use strict';

let kafkajs;
try {
  kafkajs = require('kafkajs');
} catch {
  process.exit(2);
}

const brokers = (process.argv[2] || '127.0.0.1:9092').split(',');
const timeoutMs = Number(process.argv[3] || 5000);
const brokersAt = process.argv.indexOf('--brokers');
const minBrokers = brokersAt > 0 ? Number(process.argv[brokersAt + 1]) : 1;
const kafka = new kafkajs.Kafka({
  clientId: 'tickwork-stack-probe',
  brokers,
  connectionTimeout: Math.min(timeoutMs, 3000),
  requestTimeout: timeoutMs,
  retry: { retries: 0 },
  logLevel: kafkajs.logLevel.NOTHING,
});
const admin = kafka.admin();
const timer = setTimeout(() => process.exit(1), timeoutMs + 1000);

admin
  .connect()
  .then(() => admin.describeCluster())
  .then(async (cluster) => {
    await admin.disconnect();
    clearTimeout(timer);
    const ok =
      cluster.brokers.length >= minBrokers && cluster.controller !== null && cluster.controller !== undefined;
    if (ok && process.argv.includes('--print')) {
      console.log(JSON.stringify(cluster));
    }
    process.exit(ok ? 0 : 1);
  })
  .catch(() => process.exit(1));
