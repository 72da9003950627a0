"""The reference for the cold-start benchmark: the smallest Textual app with a prompt."""

from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, TextArea


class Minimal(App[None]):
    def compose(self) -> ComposeResult:
        yield Header()
        yield TextArea(placeholder="Ask anything")
        yield Footer()


if __name__ == "__main__":
    Minimal().run()
