import { type InputRow, isBatchDim, setDim } from "../inputs/editor";

/** Each input's name, dtype and shape, with a field per free (symbolic or dynamic) dim and an optional value.
 * Dims with the same symbolic name are one size: editing one edits all. */
export function InputEditor({ rows, onChange, allowAdd = false }: { rows: InputRow[]; onChange: (rows: InputRow[]) => void; allowAdd?: boolean }) {
  const set = (i: number, patch: Partial<InputRow>) => onChange(rows.map((r, k) => (k === i ? { ...r, ...patch } : r)));
  return (
    <div className="input-editor" data-testid="input-editor">
      <table className="opts inputs-table">
        <thead>
          <tr><th>Input</th><th>Type</th><th>Shape</th><th title="Fill the whole input with this number (e.g. a sample rate); blank: generated data">Value</th></tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={i} data-input={r.name}>
              <td>
                {r.declared || r.dtype ? (
                  <code>{r.name}</code>
                ) : (
                  <input className="input-name" value={r.name} placeholder="input name" aria-label="Input name" onChange={(e) => set(i, { name: e.target.value })} />
                )}
              </td>
              <td className="muted">{r.dtype || "?"}</td>
              <td className="dims">
                {r.declared ? (
                  r.declared.length === 0 ? (
                    <span className="muted">scalar</span>
                  ) : (
                    r.declared.map((d, k) => (
                      <span key={k} className="dim">
                        {k > 0 && <span className="muted"> × </span>}
                        {typeof d === "number" ? (
                          <span className="dim-fixed" title="fixed by the model">{d}</span>
                        ) : (
                          <label className="dim-free" title={d ? `symbolic dim “${d}”: blank takes the server's default` : "dynamic dim: blank takes the server's default"}>
                            {d && <span className="dim-name">{d}</span>}
                            <input inputMode="numeric" className="dim-input" value={r.dims[k]} placeholder={isBatchDim(d, k) ? "1" : "default"} aria-label={`${r.name} dim ${k}${d ? ` (${d})` : ""}`}
                              data-testid={`dim-${r.name}-${k}`} onChange={(e) => onChange(setDim(rows, i, k, e.target.value))} />
                          </label>
                        )}
                      </span>
                    ))
                  )
                ) : (
                  <input value={r.shapeText} placeholder="e.g. 1x3x224x224" aria-label={`${r.name || "input"} shape`} data-testid={`shape-${r.name}`}
                    onChange={(e) => set(i, { shapeText: e.target.value })} />
                )}
              </td>
              <td>
                <input className="value-input" inputMode="decimal" value={r.value} placeholder="generated" aria-label={`${r.name || "input"} value`} data-testid={`value-${r.name}`}
                  onChange={(e) => set(i, { value: e.target.value })} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {allowAdd && (
        <button className="link" type="button" data-testid="add-input" onClick={() => onChange([...rows, { name: "", dtype: "", declared: null, dims: [], shapeText: "", value: "" }])}>
          + input by name
        </button>
      )}
    </div>
  );
}
