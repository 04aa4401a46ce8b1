"""The built-in apps, one package each (schema, data, tools, task families, policy)."""
