"""Task datasets: build from generators, validate by replay (and teacher), import Fleet records."""
