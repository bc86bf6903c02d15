from django.urls import path

from console import views

app_name = "console"

urlpatterns = [
    path("", views.home, name="home"),
    path("sign-in", views.SignInView.as_view(), name="sign-in"),
    path("sign-out", views.sign_out, name="sign-out"),
]
