from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("api.urls")),
    path("", include("annotation.urls")),
]

# A 404 raised anywhere under /api/ (e.g. a path no pattern takes) is JSON like the API's own.
handler404 = "api.views.page_not_found"
