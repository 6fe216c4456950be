"""The durable run record: checkpoints (every schema, migrated), their store, the errors log
and the read side (views, index, status). Written only by `workflow/`; read by everyone."""
