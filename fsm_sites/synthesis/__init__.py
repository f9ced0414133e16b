"""Task synthesis: goals from a site's machine, their instructions and oracle paths."""
