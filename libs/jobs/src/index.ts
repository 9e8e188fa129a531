export { JobService, JobNotFoundError, type JobServiceOptions } from './job-service';
