-- Event delivery: the key that seals a delivery's seq into its public id
-- (see deliveryIDs), so that ids cannot be guessed from one another. Open
-- makes it, from crypto/rand, at the first start that finds none; ids
-- stay the same across restarts because it is stored.
CREATE TABLE id_keys (
    name TEXT PRIMARY KEY,
    key  BLOB NOT NULL
) WITHOUT ROWID;
