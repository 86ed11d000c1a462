"""The GPU cost phase of a run (``collector.Collector``'s): kernels and copies of a profiled sample of decisions,
energy per decision (NVML), and once per run the copy floor, each only if the file lacks it."""

from __future__ import annotations

from . import costs


class GpuCosts:
    """A mixin of ``Collector``: it uses the collector's ``runners``, ``store``, ``states``, ``ui``, ``cuda_index``,
    ``_idle``, ``_have``, ``_at`` and ``_guard``."""

    def _costs(self) -> None:
        """GPU runtimes: kernels and copies of a profiled sample of decisions, energy per decision (NVML), and
        once per run the copy floor; each only if the file lacks it."""
        if not any(r.info.device == "cuda" for r in self.runners.values()):
            return
        if not self._have("SELECT 1 FROM floors WHERE run_id = ? AND kind = 'copy'"):
            self._at("copy floor")
            floor = costs.copy_floor()
            if floor:
                self.store.add_floor("copy", floor)
        for rid in [r for r in self.runners if self.runners[r].info.device == "cuda"]:
            if not self._have("SELECT 1 FROM kernels WHERE run_id = ? AND runtime_id = ?", rid):
                self._at("kernels", rid)
                self._guard(rid, self._kernels, rid)
            if rid in self.runners and not self._have(
                "SELECT 1 FROM resources WHERE run_id = ? AND runtime_id = ? AND kind LIKE 'energy%'", rid
            ):
                self._at("energy", rid)
                self._guard(rid, self._energy, rid)

    def _kernels(self, rid: str) -> None:
        with self.ui.phase(f"{rid}: kernels per decision", 1) as tick:
            rows, n = costs.kernel_rows(self.runners[rid], self.states)
            tick(1)
        self.store.add_costs(rid, rows, n)

    def _energy(self, rid: str) -> None:
        with self.ui.phase(f"{rid}: energy per decision", 1) as tick:
            rows, self._idle = costs.energy(self.runners[rid], self.states, self.cuda_index, idle=self._idle)
            tick(1)
        if rows:
            self.store.add_costs(rid, resources=rows)
