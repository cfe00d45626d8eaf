// Getting the user's attention for a ringing call when they are not looking at the page: the
// tab's title says who is calling, and a system notification appears while the tab is hidden
// (Notification API; permission is asked only from a click). Clicking the notification brings
// the tab forward. A closed tab is reached by Web Push, which has a module of its own.

export class Attention {
  constructor(baseTitle = document.title) {
    this.baseTitle = baseTitle;
    this.current = null; // { key, title, body, icon, notification }
    this.onchange = () => {};
    document.addEventListener("visibilitychange", () => this.refresh());
    // Permission given or taken back in the browser's settings: the page's offer follows.
    navigator.permissions?.query({ name: "notifications" }).then((status) => {
      status.onchange = () => this.onchange();
    }, () => {});
  }

  /** Whether the page may ask for notifications now (the browser has them and nobody decided). */
  get canAsk() {
    return typeof Notification !== "undefined" && Notification.permission === "default";
  }

  /** Asks for permission to notify; call from a click. */
  async ask() {
    if (!this.canAsk) return;
    try {
      await Notification.requestPermission();
    } catch {}
  }

  /**
   * Shows `alert` ({key, title, body, icon}) for as long as it is set: the tab title at once, a
   * notification whenever the tab is hidden. `null` clears both.
   */
  show(alert) {
    if (this.current?.key === alert?.key && this.current?.title === alert?.title) return;
    this.current?.notification?.close();
    this.current = alert ? { ...alert, notification: null } : null;
    this.refresh();
  }

  refresh() {
    const alert = this.current;
    document.title = alert ? `${alert.title} · ${this.baseTitle}` : this.baseTitle;
    if (!alert || alert.notification || !document.hidden) return;
    if (typeof Notification === "undefined" || Notification.permission !== "granted") return;
    try {
      const notification = new Notification(alert.title, {
        body: alert.body, tag: alert.key, requireInteraction: true, ...(alert.icon ? { icon: alert.icon } : {}),
      });
      notification.onclick = () => {
        window.focus();
        notification.close();
      };
      alert.notification = notification;
    } catch {}
  }
}
