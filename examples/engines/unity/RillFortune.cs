// RillFortune.cs: a Unity component that writes a fortune from the demo model
// into the log, a few tokens per frame (docs/EMBEDDING.md, "Unity").
// Needs, under Assets/: Rill.dll and the native libraries of the C# package,
// this file and ../FrameBudgetedFortune.cs. Compiled by the tests only against
// stand-ins for the few UnityEngine members it uses (tests/csharp).
#if UNITY_5_3_OR_NEWER
using UnityEngine;

public class RillFortune : MonoBehaviour
{
    public string modelPath = "models/fortune";
    public string backend = "auto";
    public string prompt = "A fool and his money";
    public float frameBudgetMs = 4.0f;

    FrameBudgetedFortune fortune;

    void Start()
    {
        fortune = new FrameBudgetedFortune(modelPath, backend, prompt, (ulong)Random.Range(0, int.MaxValue), 64);
    }

    void Update()
    {
        if (fortune == null || fortune.Done) return;
        fortune.Tick(frameBudgetMs);
        if (fortune.Done) Debug.Log(prompt + fortune.Text);
    }

    void OnDestroy()
    {
        if (fortune != null) fortune.Dispose();
        fortune = null;
    }
}
#endif
