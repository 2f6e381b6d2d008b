-- Run once by the mysql image's entrypoint, on an empty data directory (as root).

-- The archiver: reads binlogs over the replication protocol (REPLICATION SLAVE), lists them with
-- SHOW BINARY LOGS (REPLICATION CLIENT) and closes the active one with FLUSH BINARY LOGS (RELOAD),
-- so that every archive run has a rotated file to copy. SELECT on the schemas it archives, the
-- least that lets each run snapshot their tables' columns from information_schema into the schema
-- history (docs/schema.md): information_schema shows a user only the tables it may read.
CREATE USER IF NOT EXISTS 'binlake'@'%' IDENTIFIED BY 'binlake';
GRANT REPLICATION SLAVE, REPLICATION CLIENT, RELOAD ON *.* TO 'binlake'@'%';

-- The workload generator's database and user (docker/workload.py).
CREATE DATABASE IF NOT EXISTS shop;
CREATE USER IF NOT EXISTS 'shop'@'%' IDENTIFIED BY 'shop';
GRANT ALL PRIVILEGES ON shop.* TO 'shop'@'%';
GRANT SELECT ON shop.* TO 'binlake'@'%';
-- XA RECOVER: the workload rolls back its own XA transactions left prepared by a crash.
GRANT XA_RECOVER_ADMIN ON *.* TO 'shop'@'%';
