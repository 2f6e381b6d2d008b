-- Run once by the mysql image's entrypoint, on an empty data directory (as root).

-- The archiver: reads binlogs over the replication protocol (REPLICATION SLAVE), lists them with
-- SHOW BINARY LOGS (REPLICATION CLIENT) and closes the active one with FLUSH BINARY LOGS (RELOAD),
-- so that every archive run has a rotated file to copy. It can read no table.
CREATE USER IF NOT EXISTS 'binlake'@'%' IDENTIFIED BY 'binlake';
GRANT REPLICATION SLAVE, REPLICATION CLIENT, RELOAD ON *.* TO 'binlake'@'%';

-- The workload generator's database and user (docker/workload.py).
CREATE DATABASE IF NOT EXISTS shop;
CREATE USER IF NOT EXISTS 'shop'@'%' IDENTIFIED BY 'shop';
GRANT ALL PRIVILEGES ON shop.* TO 'shop'@'%';
-- XA RECOVER: the workload rolls back its own XA transactions left prepared by a crash.
GRANT XA_RECOVER_ADMIN ON *.* TO 'shop'@'%';
