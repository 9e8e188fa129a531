/** How infra/start and docker-compose.yml launch the executor; the benches launch it the same way. */
export const EXECUTOR_NODE_FLAGS = '--max-semi-space-size=32';
