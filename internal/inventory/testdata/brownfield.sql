-- A server as a platform team might have built it by hand over the years:
-- group and login roles, nested memberships, databases with different
-- owners, encodings and settings, schemas, extensions in their own
-- schemas, grants and default privileges. psql runs it as written
-- (psql -v ON_ERROR_STOP=1 -f brownfield.sql); the inventory tests run
-- it section by section, one per \connect.

-- Groups.
CREATE ROLE app_readers NOLOGIN;
CREATE ROLE app_writers NOLOGIN;
CREATE ROLE analysts NOLOGIN IN ROLE app_readers;
CREATE ROLE ops NOLOGIN CREATEDB;
COMMENT ON ROLE ops IS 'on-call engineers';
GRANT app_writers TO ops WITH ADMIN OPTION;

-- Logins. No passwords here: the inventory never reads one.
CREATE ROLE app_orders LOGIN CONNECTION LIMIT 20 IN ROLE app_writers;
CREATE ROLE app_billing LOGIN CONNECTION LIMIT 10 VALID UNTIL '2031-01-01 00:00:00+00' IN ROLE app_writers, app_readers;
CREATE ROLE report_bot LOGIN NOINHERIT CONNECTION LIMIT 2 IN ROLE analysts;
ALTER ROLE report_bot SET statement_timeout = '30s';
ALTER ROLE report_bot SET search_path = marts, public;
CREATE ROLE etl LOGIN CREATEDB;
CREATE ROLE migrator LOGIN CREATEROLE;
CREATE ROLE replicator LOGIN REPLICATION;
DO $$
BEGIN
  FOR i IN 1..20 LOOP
    EXECUTE format('CREATE ROLE %I LOGIN IN ROLE app_readers', 'svc_' || lpad(i::text, 2, '0'));
  END LOOP;
END $$;

-- What the API cannot take: a name with capitals and a space, and a
-- second superuser.
CREATE ROLE "Legacy Admin" LOGIN;
CREATE ROLE dba SUPERUSER LOGIN;

-- A role no team has claimed yet: the mapping below places it nowhere.
CREATE ROLE contractor LOGIN;

-- Databases.
CREATE DATABASE orders OWNER app_orders;
COMMENT ON DATABASE orders IS 'order processing';
CREATE DATABASE billing OWNER app_billing CONNECTION LIMIT 50;
CREATE DATABASE analytics OWNER etl;
ALTER DATABASE analytics SET work_mem = '64MB';
ALTER ROLE report_bot IN DATABASE analytics SET work_mem = '16MB';
CREATE DATABASE legacy OWNER ops ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
CREATE DATABASE frozen OWNER ops;
ALTER DATABASE frozen WITH ALLOW_CONNECTIONS false;
CREATE DATABASE "Reports-2024" OWNER etl;

GRANT CONNECT ON DATABASE analytics TO analysts;

\connect orders
CREATE SCHEMA sales AUTHORIZATION app_orders;
CREATE SCHEMA audit AUTHORIZATION ops;
COMMENT ON SCHEMA audit IS 'append-only audit trail';
CREATE EXTENSION pgcrypto;
CREATE TABLE sales.items (id bigint PRIMARY KEY, sku text);
CREATE TABLE sales.orders (id bigserial PRIMARY KEY, item bigint REFERENCES sales.items);
CREATE VIEW sales.open_orders AS SELECT id FROM sales.orders;
CREATE FUNCTION sales.total(order_id bigint) RETURNS numeric LANGUAGE sql AS 'SELECT 0::numeric';
ALTER TABLE sales.items OWNER TO app_orders;
ALTER TABLE sales.orders OWNER TO app_orders;
ALTER VIEW sales.open_orders OWNER TO app_orders;
ALTER FUNCTION sales.total(bigint) OWNER TO app_orders;
GRANT USAGE ON SCHEMA sales TO app_readers;
GRANT SELECT ON ALL TABLES IN SCHEMA sales TO app_readers;
GRANT INSERT, UPDATE ON sales.items TO app_writers WITH GRANT OPTION;
GRANT USAGE ON SEQUENCE sales.orders_id_seq TO app_writers;
GRANT EXECUTE ON FUNCTION sales.total(bigint) TO app_readers;
ALTER DEFAULT PRIVILEGES FOR ROLE app_orders IN SCHEMA sales GRANT SELECT ON TABLES TO app_readers;
-- What the API cannot grant: a column's privilege, and a grant to PUBLIC.
GRANT SELECT (sku) ON sales.items TO svc_01;
GRANT SELECT ON sales.open_orders TO PUBLIC;

\connect billing
CREATE SCHEMA crypto AUTHORIZATION app_billing;
CREATE EXTENSION pgcrypto SCHEMA crypto;
CREATE SCHEMA invoices AUTHORIZATION app_billing;
ALTER DEFAULT PRIVILEGES FOR ROLE app_billing GRANT USAGE ON SEQUENCES TO app_writers;

\connect analytics
CREATE SCHEMA marts AUTHORIZATION analysts;
CREATE SCHEMA "Staging" AUTHORIZATION etl;
GRANT USAGE ON SCHEMA marts TO report_bot;
