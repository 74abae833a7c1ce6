"""The Hub side: packaged resources, building dataset folders, cards, publishing and its checks, eval results."""
