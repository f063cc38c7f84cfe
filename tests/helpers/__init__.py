"""What the tests share: builders of projects, items and answers, the stack and browser helpers.

Test modules import from here, never from one another; shared fixtures live in the conftest."""
