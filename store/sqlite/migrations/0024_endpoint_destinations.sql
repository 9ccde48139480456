-- Broker destinations: an endpoint's type (webhook, nats or kafka) and a
-- broker endpoint's config, sealed whole at rest as it holds the broker's
-- credentials ('' for a webhook). Endpoints stored before this migration
-- are webhooks.
ALTER TABLE endpoints ADD COLUMN type TEXT NOT NULL DEFAULT 'webhook';
ALTER TABLE endpoints ADD COLUMN destination TEXT NOT NULL DEFAULT '';
