// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"
#include "remote/clustercheck.h"
#include "remote/transportfactory.h"

#include <QWidget>

#include <memory>

class QLabel;
class QPushButton;
class QTableView;

namespace rankscope::gui {

class HostKeyPrompter;
class NodeTableModel;

// The cluster: the job's nodes in a table, ways to add them (by hand, from ~/.ssh/config, from a DeepSpeed
// hostfile), and the pre-flight check. The check runs on remote::ClusterCheck's own threads; each node's
// result comes back by a queued signal and fills its row; an unknown host key or a passphrase is asked in a
// dialog through the HostKeyPrompter.
class ClusterPanel final : public QWidget {
    Q_OBJECT

public:
    explicit ClusterPanel(QWidget* parent = nullptr);
    ~ClusterPanel() override; // refuses waiting questions, then waits for a running check's threads

    void setJob(const JobSpec& job);
    [[nodiscard]] JobSpec job() const;
    [[nodiscard]] NodeTableModel* model() const { return m_model; }
    [[nodiscard]] HostKeyPrompter* prompter() const { return m_prompter; }

    // known_hosts, ssh config, timeouts for the check; the prompt callbacks are always the prompter's.
    void setConnectionOptions(const remote::ConnectionOptions& options) { m_options = options; }
    // Where "From ~/.ssh/config…" reads aliases (default ~/.ssh/config).
    void setSshConfigPath(const QString& path) { m_sshConfigPath = path; }

    // Adds the hostfile's nodes (hosts already in the job are skipped). False with *error naming every bad
    // line, or the unreadable file; the good lines are added all the same.
    bool importHostfile(const QString& path, QString* error);
    void addNodes(const QVector<NodeSpec>& nodes);
    void addSshConfigHosts(const QStringList& aliases); // each a node with only its host (the alias)

    // Starts the pre-flight of every node; false with *error when it cannot start (no nodes, one running).
    bool startCheck(QString* error = nullptr);
    [[nodiscard]] bool isChecking() const;
    [[nodiscard]] QString statusText() const;

signals:
    void nodesEdited(); // the user added, removed or edited nodes: job() has them
    void checkFinished(const rankscope::remote::ClusterCheckResult& result);

private:
    void addNodeByHand();
    void addFromSshConfig();
    void chooseHostfile();
    void removeSelected();
    void onNodeChecked(const remote::NodeCheck& check);
    void onCheckFinished(const remote::ClusterCheckResult& result);
    void showDetails();
    void updateButtons();
    void setStatus(const QString& text, bool error = false);
    [[nodiscard]] QStringList hosts() const;

    NodeTableModel* m_model = nullptr;
    HostKeyPrompter* m_prompter = nullptr;
    QTableView* m_table = nullptr;
    QLabel* m_details = nullptr;
    QLabel* m_status = nullptr;
    QPushButton* m_remove = nullptr;
    QPushButton* m_check = nullptr;
    remote::ConnectionOptions m_options;
    QString m_sshConfigPath;
    std::unique_ptr<remote::ClusterCheck> m_running;
    QVector<NodeSpec> m_checkedNodes; // the nodes the running check was started on
};

} // namespace rankscope::gui
