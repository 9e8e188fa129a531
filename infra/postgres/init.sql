-- Run once by the postgres image in docker-compose.yml (on an empty data volume), after it has
-- created POSTGRES_DB=tickwork. infra/stack creates the same databases on a local server.
CREATE DATABASE tickwork_test;
CREATE DATABASE tickwork_registry;
