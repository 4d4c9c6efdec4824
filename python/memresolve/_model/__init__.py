"""The data model: vocabularies, validation, scopes, records, contexts, tombstones, results."""
