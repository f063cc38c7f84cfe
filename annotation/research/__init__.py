"""The research wing: agreement and its cache, scores, the leaderboard, plots, system runs
(predictions), the LLM rater and their pages."""
