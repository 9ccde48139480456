-- Consumers by state. The metrics count them at every scrape; with this
-- index the count reads a small index instead of every consumer row (on
-- a read connection those pages are memory-mapped and stay in the RSS).
CREATE INDEX consumers_state ON consumers (state);
