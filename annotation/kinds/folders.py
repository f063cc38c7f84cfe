"""Serving each kind's folder from the registry: its templates (annotation/kinds/<key>/templates/,
found by name as the shared ones in templates/ are) and its page scripts
(annotation/kinds/<key>/static/<key>/, at /static/<key>/ for runserver, whitenoise and
collectstatic). config/settings.py names these two classes, so no setting lists a kind."""

from django.contrib.staticfiles.finders import FileSystemFinder
from django.core.files.storage import FileSystemStorage
from django.template.loaders.filesystem import Loader

from . import kind_dirs


class KindTemplateLoader(Loader):
    """The filesystem loader over every kind's ``templates`` folder."""

    def get_dirs(self):
        return kind_dirs("templates")


class KindStaticFinder(FileSystemFinder):
    """The STATICFILES_DIRS finder over every kind's ``static`` folder in place of the setting
    (whose directories the stock finder before it serves)."""

    def __init__(self, app_names=None, *args, **kwargs):
        super().__init__(app_names, *args, **kwargs)
        self.locations = [("", root) for root in kind_dirs("static")]
        self.storages = {root: FileSystemStorage(location=root) for _, root in self.locations}

    def check(self, **kwargs):
        # STATICFILES_DIRS is checked by the stock finder; the kinds' folders exist by kind_dirs
        return []
