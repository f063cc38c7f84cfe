# Two commands do all the set-up on a fresh machine:
#   make run   — install, migrate, load the demo, serve on http://127.0.0.1:8000 (embedded default)
#   make test  — install and run the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install install-dev migrate demo serve worker benchmark clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt $(VENV)/.installed
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

migrate: install
	$(BIN)/python manage.py migrate --noinput

demo: migrate
	$(BIN)/python manage.py load_demo

run: demo
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	@echo "Serving on http://$(HOST):$(PORT)/  (Ctrl+C to stop)"
	$(BIN)/gunicorn config.wsgi --bind $(HOST):$(PORT) --workers 3 --access-logfile -

worker: install
	$(BIN)/celery -A config worker --loglevel=INFO

test: install-dev
	$(BIN)/python -m pytest

benchmark: install-dev
	$(BIN)/python benchmarks/felm_scale.py

clean:
	rm -rf $(VENV) staticfiles db.sqlite3 db.sqlite3-*
