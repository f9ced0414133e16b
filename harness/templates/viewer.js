// Node details and filmstrip. NODES maps node id -> record written by harness/store/viewer.py.
function text(value) { return value === null || value === undefined ? "" : String(value); }

// The parent's screenshot with the node's action drawn over it as SVG in image pixels.
function actionFrame(node) {
  const img = document.createElement("img");
  img.src = node.action_shot;
  img.alt = `the action that led to node ${node.id}, on the previous screenshot`;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", `0 0 ${node.action_size[0]} ${node.action_size[1]}`);
  svg.setAttribute("preserveAspectRatio", "none");
  svg.innerHTML = node.action_svg;
  return [img, svg];
}

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
  document.getElementById("action-fig").hidden = !node.action_shot;
  document.getElementById("action-frame").replaceChildren(...(node.action_shot ? actionFrame(node) : []));
  const rows = [["action", node.action_text || JSON.stringify(node.action)],
    ["verdict", node.verdict_words], ["url", node.url],
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
    const frame = document.createElement("div");
    frame.className = "frame";
    if (step.action_shot) {
      frame.append(...actionFrame(step));
    } else {
      const img = document.createElement("img");
      img.src = step.shot || "";
      img.alt = `node ${pid}`;
      frame.append(img);
    }
    const cap = document.createElement("figcaption");
    cap.textContent = `#${pid} ${step.action_text || (step.action ? step.action.type : "root")}`;
    fig.append(frame, cap);
    fig.addEventListener("click", () => showNode(String(pid)));
    return fig;
  }));
}

document.addEventListener("click", event => {
  const target = event.target.closest(".node");
  if (target) { event.preventDefault(); showNode(target.dataset.id); }
});
