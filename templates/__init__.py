"""Package data of rtreport (installed as ``site_gen.templates``): the site's Jinja templates."""
