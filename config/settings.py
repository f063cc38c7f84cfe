"""Settings, read from the environment.

Embedded default (nothing set): SQLite file in the repository, Celery tasks run in-process,
offline pipeline backends. Full stack: ``DATABASE_URL`` (PostgreSQL) and
``CELERY_BROKER_URL`` (Redis) switch to the real services.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.secret_key import load_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
# Files the server writes at run time (uploaded imports, the embedded default's generated
# secret key). Web and worker processes must share it: docker-compose mounts one volume on both.
DATA_DIR = Path(os.environ.get("DJANGO_DATA_DIR", BASE_DIR / "var"))


def env_bool(name, default=False):
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name, default=""):
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


def env_int(name, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {value!r}") from None


DEBUG = env_bool("DJANGO_DEBUG", default=False)
# DJANGO_SECRET_KEY, or a key generated once into DJANGO_SECRET_KEY_FILE (make run keeps it in
# var/secret_key); with neither the server refuses to start (ImproperlyConfigured).
SECRET_KEY = load_secret_key(os.environ, debug=DEBUG)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

# HTTPS behind a TLS-terminating proxy: DJANGO_HTTPS=1 turns the whole set on, each overridable.
# Off by default, so the plain-HTTP embedded and docker-compose defaults work on localhost.
HTTPS = env_bool("DJANGO_HTTPS")
if env_bool("DJANGO_SECURE_PROXY_SSL_HEADER", HTTPS):
    # The proxy must set (not pass on) X-Forwarded-Proto; the server is reachable only through it.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", HTTPS)
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 365 * 24 * 3600 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", HTTPS)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", HTTPS)
SESSION_COOKIE_SECURE = env_bool("DJANGO_SESSION_COOKIE_SECURE", HTTPS)
CSRF_COOKIE_SECURE = env_bool("DJANGO_CSRF_COOKIE_SECURE", HTTPS)
# The client address for login rate limiting: the last X-Forwarded-For entry (the proxy's).
TRUST_X_FORWARDED_FOR = env_bool("DJANGO_TRUST_X_FORWARDED_FOR", HTTPS)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "annotation",
    "api",
]

MIDDLEWARE = [
    # First, so it runs after everything that may read an upload: removes half-written ones.
    "annotation.imports.uploads.UploadCleanupMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: turns a locked-out login into AXES_LOCKOUT_CALLABLE's page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "OPTIONS": {
            # Django's default loaders with each kind's folder between templates/ and the apps'
            "loaders": [
                (
                    "django.template.loaders.cached.Loader",
                    [
                        "django.template.loaders.filesystem.Loader",
                        "annotation.kinds.folders.KindTemplateLoader",
                        "django.template.loaders.app_directories.Loader",
                    ],
                ),
            ],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several people save at once. A deferred transaction that reads, then writes fails at
    # once with "database is locked" (SQLite cannot wait to upgrade its lock), so transactions
    # take the write lock when they start and wait up to the timeout; WAL lets reads go on.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"}
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 8},
    },
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# static/ and, at /static/<kind>/, each kind's page scripts (annotation/kinds/<kind>/static/)
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "annotation.kinds.folders.KindStaticFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
]
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", BASE_DIR / "staticfiles"))
# Serve static/ even where collectstatic has not run (make run and the image do run it).
WHITENOISE_USE_FINDERS = True

# Login rate limiting (django-axes): after AXES_FAILURE_LIMIT failed logins for one username
# from one address, that pair is refused (429) for AXES_COOLOFF_MINUTES, on the login page, the
# Django admin and POST /api/auth/token/. A successful login resets that pair's count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
AXES_LOCKOUT_CALLABLE = "config.lockout.lockout_response"
AXES_CLIENT_IP_CALLABLE = "config.lockout.client_ip"
AXES_USERNAME_CALLABLE = "config.lockout.client_username"
AXES_ENABLED = env_bool("AXES_ENABLED", True)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "annotation:home"
LOGOUT_REDIRECT_URL = "login"

# Uploads of JSONL files go to a temporary file, not memory (issue 22): an import upload held
# whole grew the web worker by a multiple of the file's size.
FILE_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024
# ... in the data directory (made on first upload), not the system's temp directory; a file of
# an upload cut off mid-body is removed (annotation.imports.uploads).
FILE_UPLOAD_TEMP_DIR = str(DATA_DIR / "upload-tmp")
FILE_UPLOAD_HANDLERS = [
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "annotation.imports.uploads.DataDirUploadHandler",
]
DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024
# Largest import file accepted (bytes); larger uploads answer 413. Imports are stored under
# DATA_DIR / "imports" until their Celery task has run.
IMPORT_MAX_UPLOAD_BYTES = int(os.environ.get("IMPORT_MAX_UPLOAD_BYTES", str(200 * 1024 * 1024)))
# Longest document of a corpus (characters): the sentence splitter's time grows with a document's
# length (seconds at this one); a longer line fails the corpus with its number.
CORPUS_MAX_DOCUMENT_CHARS = env_int("CORPUS_MAX_DOCUMENT_CHARS", 1_000_000)
# Step-2 retrieval (annotation.evidence.corpus_search, docs/scaling.md): from this many passages in
# the corpora a project searches (PostgreSQL, all of them in a vector index), the vector index finds
# the candidates and full-text search only adds the passages of a query's rare lexemes (in at most
# CORPUS_RARE_TERM_PASSAGES passages each); below it, full-text search finds candidates as well.
# 0: never dense-first.
CORPUS_DENSE_FIRST_PASSAGES = env_int("CORPUS_DENSE_FIRST_PASSAGES", 500_000)
CORPUS_RARE_TERM_PASSAGES = env_int("CORPUS_RARE_TERM_PASSAGES", 200)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Closed: every view and action names its own rule (api/permissions.py).
    "DEFAULT_PERMISSION_CLASSES": ["api.permissions.Undeclared"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    # JSON nested too deeply is a 400, not a RecursionError (500).
    "DEFAULT_PARSER_CLASSES": [
        "api.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # Documents the 4xx answers of each operation too.
    "DEFAULT_SCHEMA_CLASS": "api.schema.AutoSchema",
    # `format` is a domain parameter here (export/import formats), not content negotiation.
    "URL_FORMAT_OVERRIDE": None,
    "EXCEPTION_HANDLER": "api.exceptions.exception_handler",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Fact-checking annotation workbench API",
    "DESCRIPTION": "Projects, items, blind double annotation, consolidation, agreement and export.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI assets come from the installed sidecar package: no CDN at run time.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Several "status" fields with different choices: name each choice set after its model enum.
    "ENUM_NAME_OVERRIDES": {
        "StageStatusEnum": "annotation.models.StageStatus",
        "AssignmentStatusEnum": "annotation.models.AssignmentStatus",
        "ConsolidationStatusEnum": "annotation.models.ConsolidationStatus",
        "RoleEnum": "annotation.models.Role",
        # imports and system runs: queued, running, done, failed
        "JobStateEnum": "annotation.models.ImportJobState",
    },
}

# Unset: tasks run in-process; the in-memory transport keeps kombu from looking for a broker.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or "memory://"
CELERY_TASK_ALWAYS_EAGER = CELERY_BROKER_URL == "memory://"
# Bulk work (pre-annotation chunks, export lines) goes to the default queue; what a person waits
# for goes to INTERACTIVE_QUEUE, so that it never waits behind thousands of bulk tasks left by a
# large import; corpus embedding, the one CPU-heavy task, to EMBEDDING_QUEUE when set (e.g. GPU
# workers: `celery worker -Q embedding`). `make worker` consumes all of them; docs/operations.md.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
INTERACTIVE_QUEUE = os.environ.get("INTERACTIVE_QUEUE", "interactive")
EMBEDDING_QUEUE = os.environ.get("EMBEDDING_QUEUE", "")
CELERY_TASK_ROUTES = {
    f"annotation.tasks.{name}": {"queue": INTERACTIVE_QUEUE}
    for name in (
        "run_import",
        "import_corpus",
        "run_evidence_search",
        "retrieve_unit_again",
        "compute_agreement",
        "score_system_run",
        "run_llm_rater",
    )
}
if EMBEDDING_QUEUE:
    CELERY_TASK_ROUTES["annotation.tasks.embed_corpus"] = {"queue": EMBEDDING_QUEUE}
CELERY_TASK_EAGER_PROPAGATES = False
# A task is acknowledged when it ends, so one whose worker died (kill -9, out of memory) is
# delivered again: on Redis once it has been unacknowledged for the visibility timeout (seconds).
# It must exceed the longest task that a second delivery would repeat: a pre-annotation chunk of
# tasks.CHUNK_SIZE stages against a live LLM (benchmarks/README.md, `preannotation_throughput.py`),
# with room for an LLM many times slower. Jobs (imports, corpora,
# runs, searches) may run longer: a second delivery of a live one does nothing or is rolled back.
# A job silent for JOB_STALLED_AFTER_SECONDS (no progress recorded) shows as stalled and can be
# restarted at once (services.jobs).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 1800)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    # How often a worker looks for such tasks: a sixth of the timeout, at most every minute.
    "unacked_restore_interval": max(1, min(60, CELERY_VISIBILITY_TIMEOUT // 6)),
    "unacked_restore_throttle": 1,
}
JOB_STALLED_AFTER_SECONDS = env_int("JOB_STALLED_AFTER_SECONDS", 300)
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

# Corpus vector indexes (annotation.evidence.vector_index): on disk, shared by the processes of a machine
# (several machines: a shared volume, as DATA_DIR). Unset: DATA_DIR / "vector_index".
VECTOR_INDEX_DIR = os.environ.get("VECTOR_INDEX_DIR") or None
VECTOR_INDEX_EXACT_MAX = int(os.environ.get("VECTOR_INDEX_EXACT_MAX", "20000"))  # up to this, exact search
VECTOR_INDEX_NPROBE = int(os.environ.get("VECTOR_INDEX_NPROBE", "16"))  # IVF lists searched a query
# Where a process is readied for its first evidence search on a thread once it is up (faiss imported, the
# searchable corpora's indexes opened and searched once, the full-text statement run once, the query model
# loaded: annotation.evidence.prewarm): "worker" (Celery worker processes, where evidence is searched), "all"
# (gunicorn web workers too: for the embedded stack, whose tasks run in the web process), "0" (nowhere).
# docs/scaling.md.
VECTOR_INDEX_PREWARM = os.environ.get("VECTOR_INDEX_PREWARM", "worker")
# MiB of an ANN index's lists a searching process may keep mapped before releasing them (page cache keeps them).
VECTOR_INDEX_MAPPED_MAX = int(os.environ.get("VECTOR_INDEX_MAPPED_MAX", "64"))

# Django's cache holds results that Celery workers compute for the web processes (agreement with
# bootstrap intervals: annotation.research.agreement_cache), so with real workers it must be one
# they share: Redis, CACHE_URL or else the broker's server and database, under a key prefix of its
# own (never call cache.clear() there: it would empty the broker's queues too). Without a broker,
# tasks run in the web process and its local memory is shared with them.
CACHE_URL = os.environ.get("CACHE_URL") or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else ""
)
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": CACHE_URL,
        "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "workbench-cache"),
    }
    if CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}

# The pipeline reads LLM_BASE_URL, LLM_API_KEY and LLM_MODEL from the environment itself;
# a project's pipeline_settings["llm"] overrides them.

# Outbound requests (web pages, the search API, the LLM server) pass the guard in
# pipeline/outbound.py, which reads OUTBOUND_ALLOWED_NETWORKS, OUTBOUND_ALLOWED_PORTS and
# OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS from the environment (docs/security.md). Read once here so
# a wrong value stops start-up with its name instead of failing the first fetch.
from pipeline.outbound import OutboundPolicy  # noqa: E402  (stdlib only)

OutboundPolicy.from_env(service=True)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
