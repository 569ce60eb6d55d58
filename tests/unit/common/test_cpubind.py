"""--cpu-bind's layouts and variables as the reference 22.05 set them (tests/data/slurm-2205-cpubind.md):
two tasks of a step whose CPUs on the node are 0 and 1."""

from __future__ import annotations

import pytest

from slurmlet.common.cpubind import CpuBindError, parse, plan, verbose_line


def run(value: str | None, ntasks: int = 2, cpt: int = 1):
    got, env = plan(parse(value), [0, 1], ntasks, cpt)
    return got, env["SLURM_CPU_BIND"], env["SLURM_CPU_BIND_LIST"], env["SLURM_CPU_BIND_TYPE"]


@pytest.mark.parametrize("value, want", [
    (None, ([[0, 1], [0, 1]], "quiet,mask_cpu:0x3", "0x3", "mask_cpu:")),
    ("none", ([None, None], "quiet,none", "", "none")),
    ("cores", ([[0], [1]], "quiet,mask_cpu:0x1,0x2", "0x1,0x2", "mask_cpu:")),
    ("threads", ([[0], [1]], "quiet,mask_cpu:0x1,0x2", "0x1,0x2", "mask_cpu:")),
    ("verbose", ([[0, 1], [0, 1]], "verbose,mask_cpu:0x3", "0x3", "mask_cpu:")),
    ("map_cpu:1,0", ([[1], [0]], "quiet,map_cpu:1,0", "1,0", "map_cpu:")),
    ("mask_cpu:0x2,0x1", ([[1], [0]], "quiet,mask_cpu:2,1", "2,1", "mask_cpu:")),
    ("rank", ([[0], [1]], "quiet,rank", "", "rank")),
    ("sockets", ([[0, 1], [0, 1]], "quiet,mask_cpu:0x3,0x3", "0x3,0x3", "mask_cpu:")),
    ("ldoms", ([[0, 1], [0, 1]], "quiet,mask_cpu:0x3,0x3", "0x3,0x3", "mask_cpu:")),
    ("quiet,mask_cpu:0x3", ([[0, 1], [0, 1]], "quiet,mask_cpu:3", "3", "mask_cpu:")),  # a task's own, inherited
])
def test_layouts_and_variables_are_the_references(value, want):
    assert run(value) == want


def test_short_maps_repeat_and_too_few_cpus_give_one_each():
    assert run("map_cpu:1", ntasks=4)[0] == [[1]] * 4
    assert run("cores", cpt=2)[0] == [[0], [1]]  # -c2 on two CPUs: 22.05 bound one each
    got, env = plan(parse("cores"), [0, 1, 2, 3], 2, 2)
    assert got == [[0, 1], [2, 3]] and env["SLURM_CPU_BIND_LIST"] == "0x3,0xc"


def test_verbose_lines_are_slurmstepds():
    b = parse("verbose,map_cpu:1,0")
    assert verbose_line(b, "node1", 0, 0, [1]) % 30172 == "cpu-bind=MAP  - node1, task  0  0 [30172]: mask 0x2 set"
    assert verbose_line(parse("verbose,none"), "node1", 1, 1, None) % 7 == "cpu-bind=NONE - node1, task  1  1 [7]: mask 0x0"
    assert verbose_line(parse("v,cores"), "node1", 0, 0, [0]) % 1 == "cpu-bind=MASK - node1, task  0  0 [1]: mask 0x1 set"


@pytest.mark.parametrize("value, same", [
    ("q", "quiet"), ("Q,cores", "quiet,cores"), ("v,core", "verbose,cores"), ("thread", "threads"),
    ("socket", "sockets"), ("ldom", "ldoms"), ("board", "boards"), ("q,one_thread,cores", "cores"),
    ("mapcpu:1,0", "map_cpu:1,0"), ("map_cpu=1,0", "map_cpu:1,0"), ("MASKCPU=0x2,0x1", "mask_cpu:0x2,0x1"),
    ("NONE", "none"), ("no", "none"),
])
def test_every_spelling_srun_takes_is_the_same_binding(value, same):
    """22.05's srun reads `q`, `v`, the singular types, `one_thread`, `mapcpu`/`maskcpu` and `=` before a
    list as it reads their long forms (a workflow engine's executor starts every rule with
    `srun --cpu-bind=q`)."""
    assert parse(value) == parse(same)


@pytest.mark.parametrize("value", ["bogus", "map_cpu:", "mask_cpu:zz", "cores,bogus", "map_cpu:a"])
def test_srun_refuses_what_it_cannot_parse(value):
    with pytest.raises(CpuBindError) as e:
        parse(value)
    assert e.value.lines == [f'srun: error: unrecognized --cpu-bind argument "{value}"',
                             "srun: fatal: Failed to parse --cpu-bind= values."]


def test_a_cpu_id_out_of_any_range_is_laid_out_and_left_to_the_kernel_to_refuse():
    got, env = plan(parse("map_cpu:99999999999999999999"), [0, 1], 1)
    assert got == [[99999999999999999999]] and env["SLURM_CPU_BIND_LIST"] == "99999999999999999999"
