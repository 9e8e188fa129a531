export { openDatabase, openMessaging, waitFor, type Messaging } from './infrastructure';
