"""The widgets of the main screen; each subscribes on mount to the wire events it shows."""
