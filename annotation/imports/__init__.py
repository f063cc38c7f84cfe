"""The imports wing: uploads, the JSONL reader shared by item imports, corpora and predictions,
the item-import writer, import jobs and their pages."""
