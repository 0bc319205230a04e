"""No module of core, gui or cli imports itself back through others, at module level or inside a function."""

import grimp


def strongly_connected(graph) -> list[list[str]]:
    """Tarjan's components of the import graph with more than one module: each one is a cycle."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in graph.modules:
                continue
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_there_is_no_import_cycle():
    # grimp counts imports inside functions too: a cycle hidden in a lazy import is still a cycle. Imports under
    # TYPE_CHECKING count as well: two modules that name each other's types are still tied together (the kernel
    # model and its GEMM prefill once were, through such an import).
    graph = grimp.build_graph("core", "gui", "cli", exclude_type_checking_imports=False)
    assert strongly_connected(graph) == []


def test_the_search_finds_a_cycle_when_there_is_one():
    graph = grimp.ImportGraph()
    for name in ("a", "a.one", "a.two", "a.three"):
        graph.add_module(name)
    graph.add_import(importer="a.one", imported="a.two")
    graph.add_import(importer="a.two", imported="a.one")
    graph.add_import(importer="a.three", imported="a.one")
    assert strongly_connected(graph) == [["a.one", "a.two"]]
