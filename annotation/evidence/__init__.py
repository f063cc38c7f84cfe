"""The evidence wing: corpora, their search (lexical and vector index), the evidence an
annotator searches or retrieves again, and their pages."""
