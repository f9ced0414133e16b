// Node details and filmstrip. NODES maps node id -> record written by harness/store/viewer.py.
function text(value) { return value === null || value === undefined ? "" : String(value); }

function showNode(id) {
  const node = NODES[id];
  if (!node) return;
  document.querySelectorAll(".node.selected").forEach(el => el.classList.remove("selected"));
  document.querySelectorAll(`.node[data-id="${id}"]`).forEach(el => el.classList.add("selected"));
  document.getElementById("hint").hidden = true;
  document.getElementById("panel").hidden = false;
  document.getElementById("title").textContent = `Node #${node.id} — ${node.state}`;
  const shot = document.getElementById("shot");
  shot.src = node.shot || "";
  const actionFig = document.getElementById("action-fig");
  actionFig.hidden = !node.action_shot;
  document.getElementById("action-shot").src = node.action_shot || "";
  const rows = [["action", node.action_text || JSON.stringify(node.action)], ["url", node.url],
    ["reward", node.reward], ["visits", node.visits], ["status", node.status],
    ["success", node.success], ["depth", node.depth], ["flags", node.flags.join(", ")]];
  const facts = document.getElementById("facts");
  facts.replaceChildren(...rows.map(([k, v]) => {
    const tr = document.createElement("tr");
    tr.innerHTML = "<td></td><td></td>";
    tr.children[0].textContent = k; tr.children[1].textContent = text(v);
    return tr;
  }));
  document.getElementById("verdict").textContent =
    node.verdict ? JSON.stringify(node.verdict, null, 2) : "(no step verdict)";
  const strip = document.getElementById("filmstrip");
  strip.replaceChildren(...node.path.map(pid => {
    const step = NODES[pid];
    const fig = document.createElement("figure");
    const img = document.createElement("img");
    img.src = step.action_shot || step.shot || "";
    img.alt = `node ${pid}`;
    const cap = document.createElement("figcaption");
    cap.textContent = `#${pid} ${step.action_text || (step.action ? step.action.type : "root")}`;
    fig.append(img, cap);
    fig.addEventListener("click", () => showNode(String(pid)));
    return fig;
  }));
}

document.addEventListener("click", event => {
  const target = event.target.closest(".node");
  if (target) { event.preventDefault(); showNode(target.dataset.id); }
});
