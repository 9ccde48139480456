-- Segments written from now on hold records that describe themselves
-- (format 2: each group commit's bytes framed with its streams, positions,
-- producer and closure changes and a checksum), so that the store can
-- rebuild at open what a commit of the database lost. The segments
-- written before hold bare bytes (format 1): they are read as before and
-- never appended to again.
ALTER TABLE segments ADD COLUMN format INTEGER NOT NULL DEFAULT 1;
