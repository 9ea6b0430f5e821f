"""The `battleline` command's server side: `serve` (engine, hosted AI and web page
together), `ai`, `web` and `tournament`, added to the client's command through the
``battleline.commands`` entry point, and `LocalService`, an engine in this process."""
