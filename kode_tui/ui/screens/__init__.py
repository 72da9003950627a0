"""Screens: the main screen, the session picker, help, full-screen diff."""
