-- A subscription's owner: the tenant of the credential that created it,
-- '' for the platform. Subscriptions stored before owners existed become
-- the platform's.
ALTER TABLE subscriptions ADD COLUMN tenant TEXT COLLATE "C" NOT NULL DEFAULT '';
CREATE INDEX subscriptions_tenant ON subscriptions (tenant, id);
