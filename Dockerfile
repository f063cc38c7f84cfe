FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DJANGO_STATIC_ROOT=/app/staticfiles
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN DJANGO_SECRET_KEY=build-only python manage.py collectstatic --noinput --verbosity 0
# /data: DJANGO_DATA_DIR in docker-compose, a volume shared by web and worker; created here so
# the volume starts out owned by the user the server runs as.
RUN useradd --create-home workbench && mkdir -p /data && chown -R workbench /app /data
USER workbench
EXPOSE 8000
CMD ["gunicorn", "config.wsgi", "--config", "config/gunicorn.py", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "60", "--graceful-timeout", "30", "--access-logfile", "-"]
