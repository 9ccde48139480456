-- A subscription's owner: the tenant of the credential that created it,
-- '' for the platform. Subscriptions stored before owners existed were
-- made by the platform's credentials' rules and become the platform's.
ALTER TABLE subscriptions ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
CREATE INDEX subscriptions_tenant ON subscriptions (tenant, id);
