"""Persistence (SQLModel over SQLite): visitor sessions, progress, saved scenarios. Never trace logic."""
