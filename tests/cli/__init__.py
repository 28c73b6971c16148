"""The command line and the other front ends: dshstream chat/replay/demo, terminal and notebook
rendering, the replay server, the local model server script and the live-server tests."""
