"""gemms.csv -> search/chunks/gemms_<first>-<last>.yaml (dense-search rows, one file per job).
Positions are in the search order, where GEMMs are dealt to chunks by baseline cost."""
from geko_lib import phases

phases.run_script(snakemake, "search_configure")  # noqa: F821
