"""Model adapters behind one protocol (see ``vidaudit.models.base``)."""
