"""Runtime bridge: script -> trace -> hot lines -> verdict. Imports no host."""
